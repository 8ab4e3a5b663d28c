"""A real server for the tests: the product's own (tilewave.server.local), uvicorn on 127.0.0.1 in a thread."""
from tilewave.server.local import serve

__all__ = ["serve"]
