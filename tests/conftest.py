"""Shared fixtures: the end-to-end cluster harness, the fake NVML library, a headless browser."""

import signal

import pytest

from tests.browser import browser, named_browser, network_browser  # noqa: F401
from tests.cluster import cluster, searchable_dir, test_image  # noqa: F401
from tests.nvml_fake import fake_nvml, fake_nvml_lib  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """Commands the tests start take SIGINT as a user's Ctrl-C (several tests end one so)
    also when this run was started with SIGINT ignored, as a background job of a script is:
    a child inherits an ignored signal, and Python then installs no KeyboardInterrupt."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
