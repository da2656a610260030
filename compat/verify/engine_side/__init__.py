"""Scripts run BY the engine's interpreter (`python <file> JOB EVENTS`), never imported by compat:
they need vLLM, torch and safetensors, which only the serving venv has. A package only so that a
plain `pip install .` ships them."""
