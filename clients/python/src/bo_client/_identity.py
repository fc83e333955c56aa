"""Who is asking: the client id a worker suggests under when it names none. Its own module so
that both the client and the optimisation loop can take it without importing each other."""

from __future__ import annotations

import os
import socket


def default_client_id() -> str:
    """This host and process: a worker restarted under the same id gets its ACTIVE trials back."""
    return f"{socket.gethostname()}-{os.getpid()}"
