"""The scheduler's business logic: a cluster model, a snapshot builder and one service per
concern (jobs, agents, nodes, GPU health, control, planning), composed in ``services``.

Every service runs on one thread (the engine's core thread), commits before it returns, and
returns the orders to send to agents afterwards, so an order never goes out for a change that
was not committed. docs/architecture.md shows who calls whom.
"""
