"""`python data_prep/build_vocab.py ...` = the `build_vocab` console script."""
from official_rtd.tools import build_vocab

if __name__ == "__main__":
  build_vocab.run()
