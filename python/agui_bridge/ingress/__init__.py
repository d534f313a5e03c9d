"""One request handler (``handler``) with two front ends: ASGI (``asgi``) and RSGI (``rsgi``)."""

from .handler import Handler, HttpError, Request

__all__ = ["Handler", "HttpError", "Request"]
