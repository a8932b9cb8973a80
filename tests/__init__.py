"""gputui's tests: one package, imported as tests.…"""
