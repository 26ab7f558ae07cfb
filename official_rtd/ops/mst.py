"""Dependency tree decoding from arc scores: the highest-scoring head per word, or the
highest-scoring well-formed tree (Chu-Liu-Edmonds maximum spanning arborescence rooted at 0 with
exactly one word attached to the root, as UD trees have; Dozat & Manning's and Stanza's decoders
enforce the same).

Scores are `[n + 1, n + 1]` with `scores[h, d]` the score of head h for dependent d (0: ROOT);
row 0 is ROOT's, column 0 is ignored.
"""
from typing import List

import numpy as np


def argmax_heads(scores: np.ndarray) -> List[int]:
  """Each word's best head (not itself); may form cycles or several roots."""
  s = np.array(scores, np.float64)
  np.fill_diagonal(s, -np.inf)
  return [int(h) for h in s[:, 1:].argmax(axis=0)]


def _find_cycle(heads: np.ndarray):
  """A list of the nodes of one cycle of `heads` (node -> head, heads[0] = -1), or None."""
  n = len(heads)
  color = np.zeros(n, np.int32)  # 0 unvisited, 1 on the current path, 2 done
  for start in range(1, n):
    path, node = [], start
    while node > 0 and color[node] == 0:
      color[node] = 1
      path.append(node)
      node = heads[node]
    if node > 0 and color[node] == 1:
      return path[path.index(node):]
    for visited in path:
      color[visited] = 2
  return None


def _chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
  """Heads (`[n]`, heads[0] = -1) of the maximum spanning arborescence rooted at 0 of the
  complete graph with `scores[h, d]` (-inf: no edge)."""
  n = scores.shape[0]
  s = scores.copy()
  np.fill_diagonal(s, -np.inf)
  s[:, 0] = -np.inf
  heads = s.argmax(axis=0)
  heads[0] = -1
  cycle = _find_cycle(heads)
  if cycle is None:
    return heads
  # Contract the cycle into one node c; an edge into the cycle at v is scored as replacing v's
  # cycle edge: s[u, v] - s[heads[v], v].
  in_cycle = np.zeros(n, bool)
  in_cycle[cycle] = True
  rest = [v for v in range(n) if not in_cycle[v]]
  c = len(rest)  # the contracted node's index in the smaller graph
  index = {v: i for i, v in enumerate(rest)}
  small = np.full([c + 1, c + 1], -np.inf)
  cycle_score = {v: s[heads[v], v] for v in cycle}
  enter_at = np.zeros(c + 1, np.int64)   # for an edge u -> c: the cycle node it enters
  leave_from = np.zeros(c + 1, np.int64)  # for an edge c -> d: the cycle node it leaves
  for u in rest:
    for d in rest:
      small[index[u], index[d]] = s[u, d]
    gains = [s[u, v] - cycle_score[v] for v in cycle]
    best = int(np.argmax(gains))
    small[index[u], c] = gains[best]
    enter_at[index[u]] = cycle[best]
  for d in rest:
    outs = [s[v, d] for v in cycle]
    best = int(np.argmax(outs))
    small[c, index[d]] = outs[best]
    leave_from[index[d]] = cycle[best]
  small_heads = _chu_liu_edmonds(small)
  result = heads.copy()
  for d in rest:
    if d == 0:
      continue
    h = small_heads[index[d]]
    result[d] = leave_from[index[d]] if h == c else rest[h]
  entered = enter_at[small_heads[c]]
  result[entered] = rest[small_heads[c]]  # the rest of the cycle keeps its edges
  return result


def mst_heads(scores: np.ndarray) -> List[int]:
  """The heads (`[n]`, 1-based words; 0: ROOT) of the highest-scoring tree with exactly one word
  attached to ROOT."""
  s = np.array(scores, np.float64)
  n = s.shape[0] - 1
  if n == 1:
    return [0]
  best, best_score = None, -np.inf
  first = _chu_liu_edmonds(s)
  if sum(1 for d in range(1, n + 1) if first[d] == 0) == 1:
    return [int(h) for h in first[1:]]
  for root in range(1, n + 1):  # several words on ROOT: try each as the only one
    t = s.copy()
    t[0, :] = -np.inf
    t[0, root] = s[0, root]
    heads = _chu_liu_edmonds(t)
    total = sum(s[heads[d], d] for d in range(1, n + 1))
    if total > best_score:
      best, best_score = heads, total
  return [int(h) for h in best[1:]]


def decode(arc: np.ndarray, best: np.ndarray, relation: np.ndarray, nodes: int, how: str):
  """(heads, relation ids) of words 1..nodes−1 of one sentence from its arc summaries
  (`[h, d]` each): "argmax" takes each word's best (head, relation) edge; "mst" the tree of
  highest arc log-probability, then each word's best relation for its head."""
  if how == "argmax":
    heads = best[:nodes, 1:nodes].argmax(0)  # max over relations, then over heads
  else:
    heads = np.array(mst_heads(arc[:nodes, :nodes]))
  words = np.arange(1, nodes)
  return [int(h) for h in heads], [int(r) for r in relation[heads, words]]
