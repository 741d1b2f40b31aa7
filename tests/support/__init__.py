"""Harnesses and builders shared by test modules (fixtures stay in tests/conftest.py)."""
