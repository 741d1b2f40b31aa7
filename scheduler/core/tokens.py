"""Node join tokens: only their hash is stored."""

from __future__ import annotations

import hashlib
import secrets


def hash_token(token: str) -> str:
    """The stored form of a node join token."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh join token (printed once; only its hash is stored)."""
    return secrets.token_urlsafe(32)
