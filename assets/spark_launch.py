"""Where an asset's Spark job runs: in the Dagster run's process, or launched through Dagster Pipes.

``in_process`` (the default): the job's functions run on the ``pyspark`` resource's session in
the run's own process, a Spark driver per run (``local[*]``, a master, or Spark Connect).

``pipes``: the asset launches ``spark-submit`` of the job's file (``jobs/<name>.py``, the same
command line that runs it alone) with ``dg.PipesSubprocessClient``, as Dagster advises for Spark
on a cluster. The driver runs in that process, not in Dagster's: its progress lines go to the
run's log, and the job sends its result back (``jobs.runtime.pipes``), from which the asset records the
same metadata as in-process. The Pipes messages travel through a temporary file, so the driver
must run on the machine of the Dagster run (spark-submit's client deploy mode, the default);
the executors run wherever the master puts them. The job file imports panes: ship it with
``--py-files`` (a zip of ``jobs`` and ``windowing_core``) where the executors lack it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import dagster as dg
from dagster_pyspark import PySparkResource
from pyspark.sql import SparkSession

import jobs
from assets.spark_work import spark_work
from jobs.runtime import compilers, jvm_packages
from windowing_core.config import PipelineConfig
from windowing_core.deployment import Deployment

LAUNCHES = ("in_process", "pipes")


class SparkLaunchResource(dg.ConfigurableResource):
    """How the assets run their Spark jobs (``PANES_SPARK_LAUNCH``) and, through Pipes, with what."""

    launch: str = "in_process"
    master: str = "local[*]"
    """spark-submit's ``--master`` (``PANES_SPARK_MASTER``)."""
    submit_args: list[str] = []
    """More spark-submit arguments (``PANES_SPARK_SUBMIT_ARGS``, split on spaces): ``--py-files``,
    ``--conf``, ``--driver-memory`` ..."""
    config_path: str | None = None
    """The pipeline YAML the job loads (``PANES_CONFIG``); the Definitions were built from it."""

    @property
    def through_pipes(self) -> bool:
        if self.launch not in LAUNCHES:
            raise ValueError(f"PANES_SPARK_LAUNCH must be one of {', '.join(LAUNCHES)}, not {self.launch!r}")
        return self.launch == "pipes"

    def run(self, context: dg.AssetExecutionContext, pyspark: PySparkResource, what: str, job: str,
            argv: list[str], config: PipelineConfig | Deployment, in_process: Callable[[SparkSession], dict],
            weigh: Callable[[], dict[str, int]] = dict) -> dict:
        """The result of ``jobs/<job>.py argv``: submitted through Pipes, or ``in_process`` on the
        run's own session, its progress in the run's log as ``what`` (``spark_work``). Either way
        the same dict, the one the job reports through Pipes, so the asset records the same
        metadata. ``weigh`` sizes the input in process, as the job run alone does before its JVM
        starts: a tiny one evaluates Spark's expressions interpreted (``compilers.expressions_for``)."""
        if self.through_pipes:
            return self.submit(context, job, argv, config)
        spark = pyspark.spark_session
        with spark_work(context, spark, what), compilers.expressions_for(spark, **weigh()) as interpreted:
            if interpreted:
                context.log.info(f"{what}: a small input, Spark's expressions evaluated without generated code")
            return in_process(spark)

    def submit(self, context: dg.AssetExecutionContext, job: str, argv: list[str],
               config: PipelineConfig | Deployment) -> dict:
        """Run ``jobs/<job>.py argv`` under spark-submit through Pipes; the result it reported."""
        deployment = Deployment.load(self.config_path)  # the job loads its configuration itself
        if config != deployment and config not in (*deployment.groups, *deployment.ingests):
            raise dg.Failure(f"the Definitions' pipeline configuration is not the one in config_path "
                             f"({self.config_path or 'the default'}), which {job} would load")
        part = ([] if isinstance(config, Deployment) else ["--group", config.group] if config.group else
                ["--source", config.ingest_at] if config.ingest_at else [])
        package_root = Path(jobs.__file__).resolve().parent.parent
        spark_home = os.environ.get("SPARK_HOME") or _pyspark_home()
        # Delta's jars (and S3's, for an s3a:// location in argv), by class path (the nodes hold the
        # same files) unless submit_args say otherwise
        classpath = jvm_packages.class_path(s3=jvm_packages.on_object_storage(argv))
        jars = ["--driver-class-path", classpath, "--conf", f"spark.executor.extraClassPath={classpath}"]
        command = [os.path.join(spark_home, "bin", "spark-submit"), "--master", self.master, *jars, *self.submit_args,
                   str(package_root / "jobs" / f"{job}.py"), *argv,
                   *(["--config", self.config_path] if self.config_path else []), *part]
        context.log.info(f"launching through Dagster Pipes: {' '.join(command)}")
        python = sys.executable  # the driver's Python: dagster-pipes and panes are installed here
        env = {"SPARK_HOME": spark_home, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", python),
               "PYSPARK_DRIVER_PYTHON": python,
               "PYTHONPATH": os.pathsep.join(p for p in (str(package_root), os.environ.get("PYTHONPATH")) if p)}
        invocation = dg.PipesSubprocessClient(env=env).run(command=command, context=context)
        results = [m["result"] for m in invocation.get_custom_messages()
                   if isinstance(m, Mapping) and m.get("job") == job]
        if not results:
            raise dg.Failure(f"{job} ended without reporting its result through Dagster Pipes")
        return results[-1]


def _pyspark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def spark_launch_from_environment(environ: Mapping[str, str]) -> SparkLaunchResource:
    resource = SparkLaunchResource(
        launch=environ.get("PANES_SPARK_LAUNCH", "in_process") or "in_process",
        master=environ.get("PANES_SPARK_MASTER", "local[*]"),
        submit_args=environ.get("PANES_SPARK_SUBMIT_ARGS", "").split(),
        config_path=environ.get("PANES_CONFIG") or None,
    )
    resource.through_pipes  # a bad PANES_SPARK_LAUNCH fails when the Definitions load
    return resource
