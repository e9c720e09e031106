"""Host-neutral pieces every host adapter needs: engine jobs off the host's UI thread (jobs),
which models a host's settings still need (models), where a host puts a clip's result
(outputs), and how the command line finds the hosts it starts (plugins: the `facefuse.hosts`
entry points). Nothing here imports a host, cv2 or onnxruntime; hosts reach all of it through
the public API (facefuse/__init__.py)."""
