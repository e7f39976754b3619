"""Runnable examples for levelfield."""
