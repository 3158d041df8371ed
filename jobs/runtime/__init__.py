"""The process a job runs in: its Spark session and jars, the class archive it starts from,
its progress lines and its Dagster Pipes channel."""
