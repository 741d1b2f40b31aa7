"""The rota scheduler daemon: gRPC API, store, in-memory cluster model and policy."""
