"""agent/link"""
