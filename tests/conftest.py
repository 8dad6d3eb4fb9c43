"""Shared test set-up: no test may reach a model hub; one Dask cluster for the Dask tests."""

import logging
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def dask_client():
    """A client of a ``distributed.LocalCluster`` of 2 single-threaded worker processes, shared by every Dask test.

    Started by the first test that asks for it (the modules that do are in xdist group
    ``dask_cluster``, so that ``--dist loadgroup`` keeps them on one pytest worker) and closed at the end.
    """
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},  # no fixed port 8787: runs in parallel
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as connected,
    ):
        yield connected
