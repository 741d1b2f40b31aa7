"""scheduler/api"""
