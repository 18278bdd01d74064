"""Adapters that bring robotgate's robots.txt matching to other crawling frameworks.

Each adapter lives in its own module and imports its framework only when used,
so ``import robotgate`` never pulls one in.
"""
