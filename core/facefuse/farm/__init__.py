"""Render farms: a shot as farm work (Open Job Description job bundles, Dask distributed).

Every task runs the `facefuse render` command line of its chunk, written and read back by
facefuse.shot.contract.commandline (the table the command line's parser is built from);
`commandline` makes the whole command and a request independent of the working folder, `paths`
keeps every task's outputs inside the job's output folder, `openjd` writes job bundles, `dask_jobs`
runs chunks on Dask workers. Farm libraries (dask, openjd) are an optional extra and are imported
only by the modules that need them, when they run. Nothing here imports the command line.
"""
