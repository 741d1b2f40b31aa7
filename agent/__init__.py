"""The rota node agent: NVML inventory and telemetry, Docker runtime, scheduler link."""
