"""Host-neutral pieces every host adapter needs: engine jobs off the host's UI thread, and
which models a host's settings still need. Nothing here imports a host, cv2 or onnxruntime."""
