"""`python finetune/run_glue.py ...` = the `run_glue` console script."""
from official_rtd.tools import run_glue

if __name__ == "__main__":
  run_glue.run()
