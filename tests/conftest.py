"""Shared fixtures: the end-to-end cluster harness, the fake NVML library, a headless browser."""

from tests.browser import browser, named_browser, network_browser  # noqa: F401
from tests.cluster import cluster, searchable_dir, test_image  # noqa: F401
from tests.nvml_fake import fake_nvml, fake_nvml_lib  # noqa: F401
