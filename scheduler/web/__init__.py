"""The web dashboard and its JSON API (``/api/v1/...``), served on the scheduler's HTTP port
beside ``/metrics`` (docs/web.md)."""
