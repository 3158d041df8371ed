"""Definitions, resources, schedules and the demo: how panes runs under Dagster."""
