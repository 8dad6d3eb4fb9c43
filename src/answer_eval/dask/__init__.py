"""The Dask engine (the ``dask`` extra, imported only with ``--engine dask``): shards, partitions, the public API."""
