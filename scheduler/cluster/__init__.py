"""scheduler/cluster"""
