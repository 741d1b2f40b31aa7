"""agent/gpu"""
