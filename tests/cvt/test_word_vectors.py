"""train_word_vectors: word2vec (gensim) vectors in GloVe's format that run_cvt reads, keyed as
run_cvt looks words up; words used alike get similar vectors."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.cvt import data
from official_rtd.cvt import word_vectors
from tests import testutil


class WordVectorsTest(tf.test.TestCase):

  def test_vectors_load_as_glove_and_reflect_usage(self):
    tmp = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(3000):  # "cat"/"dog" share contexts; "Paris"/"1999" share others
      animal, place = rng.choice(["cat", "dog"]), rng.choice(["Paris", "London"])
      lines.append(f"The {animal} sat on the mat near the {animal} bowl. "
                   f"We flew to {place} in {rng.integers(1990, 2000)} by plane.")
    corpus = testutil.write_text(os.path.join(tmp, "corpus.txt"), "\n".join(lines) + "\n")
    out = os.path.join(tmp, "vectors.txt")
    count = word_vectors.train([corpus], out, dim=16, min_count=5, epochs=5, workers=1,
                               log=lambda _: None)
    words, vectors = data.load_glove(out)
    self.assertLen(words, count)
    self.assertEqual(vectors.shape, (count, 16))
    self.assertIn("0000", words)  # digits normalised as run_cvt looks them up
    self.assertIn("paris", words)
    self.assertNotIn("Paris", words)
    unit = {w: v / np.linalg.norm(v) for w, v in zip(words, vectors)}
    self.assertGreater(unit["cat"] @ unit["dog"], unit["cat"] @ unit["plane"])


if __name__ == "__main__":
  tf.test.main()
