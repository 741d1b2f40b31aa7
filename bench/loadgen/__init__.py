"""A load generator that speaks the real agent protocol for many simulated nodes
(docs/benchmarks.md, "Many nodes on one scheduler"). Run: python -m bench.loadgen --help"""
