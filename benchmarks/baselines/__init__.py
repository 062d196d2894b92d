"""Baselines measured beside flapjax: what users run today without it."""
