"""nets"""
