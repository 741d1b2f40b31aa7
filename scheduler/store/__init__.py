"""scheduler/store"""
