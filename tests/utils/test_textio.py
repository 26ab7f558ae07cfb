"""Text and JSON readers name the file and line of a bad byte or value."""
import os
import tempfile

import tensorflow as tf

from official_rtd.utils import textio


class TextioTest(tf.test.TestCase):

  def _write(self, data: bytes) -> str:
    path = os.path.join(tempfile.mkdtemp(), "input.txt")
    with open(path, "wb") as f:
      f.write(data)
    return path

  def test_lines_are_numbered_and_a_bad_byte_is_located(self):
    path = self._write("\ufeffa\nb\n".encode("utf-8") + b"ok\nbad \xff byte\n")
    lines = textio.numbered_lines(path, "utf-8-sig")
    self.assertEqual(next(lines), (1, "a\n"))  # the byte-order mark is dropped
    self.assertEqual(next(lines), (2, "b\n"))
    self.assertEqual(next(lines), (3, "ok\n"))
    with self.assertRaisesRegex(textio.InputFileError,
                                rf"^{path}:4: not UTF-8 text \(invalid start byte at byte 4"):
      next(lines)

  def test_json_errors_name_line_and_column(self):
    self.assertEqual(textio.load_json(self._write(b'{"a": [1,\n 2]}\n')), {"a": [1, 2]})
    path = self._write(b'{"a": 1,\n "b": }\n')
    with self.assertRaisesRegex(textio.InputFileError, rf"^{path}:2:7: not valid JSON"):
      textio.load_json(path)
    with self.assertRaisesRegex(textio.InputFileError, r"^f.jsonl:3: not valid JSON"):
      textio.json_line("f.jsonl", 3, '{"a": nan-ish}')
    path = self._write(b'{"a": "\xe9"}\n')
    with self.assertRaisesRegex(textio.InputFileError, rf"^{path}:1: not UTF-8"):
      textio.load_json(path)


if __name__ == "__main__":
  tf.test.main()
