import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.selection import largest_face, select_faces
from facefuse.types import Face
from facefuse.vectors import cosine_similarity


def _face(x, size, embedding=None):
    box = np.array([x, 0, x + size, size], np.float32)
    return Face(box, np.zeros((5, 2), np.float32), 0.9, embedding)


def test_one_picks_the_largest_and_many_sorts_by_size():
    small, big, mid = _face(0, 10), _face(50, 40), _face(100, 20)
    assert select_faces([small, big, mid], "one") == (big,)
    assert select_faces([small, big, mid], "many") == (big, mid, small)
    assert select_faces([], "one") == () and largest_face([]) is None


def test_reference_keeps_similar_faces_most_similar_first():
    ref = np.array([1.0, 0.0, 0.0])
    near = _face(0, 10, np.array([0.9, 0.1, 0.0]))
    nearer = _face(20, 10, np.array([1.0, 0.01, 0.0]))
    far = _face(40, 50, np.array([0.0, 1.0, 0.0]))
    picked = select_faces([near, far, nearer], "reference", ref, threshold=0.5)
    assert picked == (nearer, near)


def test_reference_without_a_reference_is_a_user_error():
    with pytest.raises(InputError):
        select_faces([_face(0, 10, np.ones(3))], "reference", None)


def test_cosine_similarity_ignores_scale():
    assert cosine_similarity(np.array([2.0, 0.0]), np.array([5.0, 0.0])) == pytest.approx(1.0)
    assert cosine_similarity(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == pytest.approx(0.0)
