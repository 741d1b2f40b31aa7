"""Generated code of the rota.v1 wire contract.

See rota.proto; regenerate with scripts/gen_proto.py.
"""
