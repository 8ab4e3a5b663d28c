"""Errors in OpenAI's shape, {"error": {"message", "type", "param", "code"}}, and the app's handlers that answer
every failure (a refused request, a validation error, an unknown route, a crash) in it."""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("tilewave.server")


class OpenAIError(Exception):
    """A failure to answer in OpenAI's error shape."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 type: str = "invalid_request_error", headers: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type
        self.headers = headers

    def response(self) -> JSONResponse:
        body = {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}
        return JSONResponse(body, status_code=self.status, headers=self.headers)


def validation_error(errors) -> OpenAIError:
    """pydantic's first error as a 400 naming the parameter."""
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    param = ".".join(loc) or None
    what = "is missing" if first.get("type") == "missing" else f"is invalid: {first.get('msg')}"
    return OpenAIError(400, f"'{param}' {what}" if param else str(first.get("msg")), param=param,
                       code="missing_required_parameter" if first.get("type") == "missing" else "invalid_value")


async def _openai_error(request: Request, exc: OpenAIError):
    return exc.response()


async def _invalid(request: Request, exc: RequestValidationError):
    return validation_error(exc.errors()).response()


async def _http_error(request: Request, exc: StarletteHTTPException):
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    return OpenAIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", code=code,
                       headers=getattr(exc, "headers", None)).response()


async def _server_error(request: Request, exc: Exception):
    log.exception("unexpected failure on %s", request.url.path)
    return OpenAIError(500, f"the server failed: {type(exc).__name__}: {exc}", type="server_error").response()


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error `app` meets in OpenAI's shape."""
    app.add_exception_handler(OpenAIError, _openai_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _server_error)
