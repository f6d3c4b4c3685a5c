"""Helpers for bench/peers.py (GPU peer benchmark)."""
