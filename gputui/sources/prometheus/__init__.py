"""The fleet read from a Prometheus server's HTTP API: the client (client.py) and the fleet's readings
(fleet_query.py)."""
