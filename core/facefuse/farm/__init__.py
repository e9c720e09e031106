"""Render farms: a shot as farm work (Open Job Description job bundles, Dask distributed).

`commandline` turns a RenderRequest into the `facefuse render` command line and back (the one
place that does), `paths` keeps every task's outputs inside the job's output folder, `openjd`
writes job bundles, `dask_jobs` runs chunks on Dask workers. Farm libraries (dask, openjd) are
an optional extra and are imported only by the modules that need them, when they run.
"""
