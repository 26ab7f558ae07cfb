"""Tag schemes and conlleval's span reading, against hand-read examples."""
import tensorflow as tf

from official_rtd.data import tag_schemes


def tags(text):
  return text.split()


class SpansTest(tf.test.TestCase):

  def test_iob1(self):
    # IOB1: I- opens a span after O or after another type; B- only splits two same-type spans.
    self.assertEqual(tag_schemes.spans_of(tags("I-PER I-PER O I-LOC B-LOC I-LOC I-ORG")),
                     [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6), ("ORG", 6, 7)])

  def test_iob2_and_conlleval_edge_cases(self):
    self.assertEqual(tag_schemes.spans_of(tags("B-NP I-NP B-NP O B-VP")),
                     [("NP", 0, 2), ("NP", 2, 3), ("VP", 4, 5)])
    # An I- after O starts a span (conlleval), an I- of another type starts a new one.
    self.assertEqual(tag_schemes.spans_of(tags("O I-NP I-NP I-VP")),
                     [("NP", 1, 3), ("VP", 3, 4)])
    # A span running to the end of the sentence is closed there.
    self.assertEqual(tag_schemes.spans_of(tags("O B-PP")), [("PP", 1, 2)])
    self.assertEqual(tag_schemes.spans_of(tags("O O")), [])
    self.assertEqual(tag_schemes.spans_of([]), [])

  def test_bioes(self):
    # Two adjacent singletons of one type stay two spans (conlleval alone would merge S-X S-X).
    self.assertEqual(tag_schemes.spans_of(tags("S-PER S-PER B-ORG I-ORG E-ORG B-ORG E-ORG O")),
                     [("PER", 0, 1), ("PER", 1, 2), ("ORG", 2, 5), ("ORG", 5, 7)])

  def test_conversions(self):
    iob1 = tags("I-PER I-PER O I-LOC B-LOC I-LOC I-ORG")
    self.assertEqual(tag_schemes.convert(iob1, "iob2"),
                     tags("B-PER I-PER O B-LOC B-LOC I-LOC B-ORG"))
    self.assertEqual(tag_schemes.convert(iob1, "bioes"),
                     tags("B-PER E-PER O S-LOC B-LOC E-LOC S-ORG"))
    for scheme in tag_schemes.SCHEMES:  # every scheme round-trips through every other
      for other in tag_schemes.SCHEMES:
        self.assertEqual(
            tag_schemes.convert(tag_schemes.convert(tag_schemes.convert(iob1, scheme), other),
                                "iob1"), iob1)
    with self.assertRaisesRegex(ValueError, "bilou"):
      tag_schemes.convert(iob1, "bilou")

  def test_pos_like_tags_are_not_spans_of_their_own(self):
    # Bare tags (no B-/I-) read as I-<tag>, as conlleval does: a run of one tag is one span.
    self.assertEqual(tag_schemes.split_tag("NNP"), ("I", "NNP"))
    self.assertEqual(tag_schemes.split_tag("B-NP"), ("B", "NP"))
    self.assertEqual(tag_schemes.split_tag("O"), ("O", ""))


if __name__ == "__main__":
  tf.test.main()
