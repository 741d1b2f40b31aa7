"""Shared fixtures: the end-to-end cluster harness and the fake NVML library."""

from tests.cluster import cluster, test_image  # noqa: F401
from tests.nvml_fake import fake_nvml, fake_nvml_lib  # noqa: F401
