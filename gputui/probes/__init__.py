"""Hardware probes (pcie, stress, membw, disk, p2p), each run in a child process: worker.py is gputui's only
importer of torch, so a probe that crashes or hangs never takes the monitor with it.

How the monitor drives one (all of it async, none of it blocking the event loop):

    link = judge.pcie_link(latest, gpu)                      # passed to the worker for the pcie verdict
    if judge.other_users(latest, gpu, own_pids):             # ask before slowing somebody's job down
        ...
    runner = ProbeRunner(ProbeRequest("stress", gpu=gpu, link=link))
    async for message in runner:                             # Progress and BadLine as they come,
        ...                                                  # then exactly one Result or Error
    await runner.cancel()                                    # on `x` or quit; kill_now() in exit handlers

Afterwards judge.judge_run(snapshots_taken_meanwhile, gpu, started_at) says what clocks, heat and throttling
did during the run, judge.rejudge_pcie() re-reads the pcie verdict against the link seen under load, and
findings.to_finding() turns it all into a Finding for the diagnostics pane.
"""
