"""Thin JSON routers: each handler calls a service function and translates its errors."""
