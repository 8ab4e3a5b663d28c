"""The HTTP server: a thin shell over the engine (see app.py)."""
