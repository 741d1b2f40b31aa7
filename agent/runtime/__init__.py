"""agent/runtime"""
