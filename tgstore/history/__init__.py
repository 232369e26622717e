"""Many commits: `sweep` (extract and store a range, locally or on Dask via `dask_workers`), `bisect` (the first
commit whose output differs), `bisect_time` (the first commit whose kernel time stepped). A commit's name and its
place in history order are the store's (tgstore.store.commits)."""
