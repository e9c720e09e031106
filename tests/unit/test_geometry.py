import cv2
import numpy as np
import pytest

from facefuse import geometry


def _similarity(angle_deg: float, scale: float, tx: float, ty: float) -> np.ndarray:
    a = np.deg2rad(angle_deg)
    return np.array([[scale * np.cos(a), -scale * np.sin(a), tx],
                     [scale * np.sin(a), scale * np.cos(a), ty]])


def test_similarity_fit_recovers_an_exact_transform():
    src = np.array([[30.0, 40.0], [70.0, 41.0], [50.0, 60.0], [35.0, 80.0], [66.0, 79.0]])
    truth = _similarity(17.0, 1.7, -12.0, 33.0)
    dst = geometry.transform_points(src, truth)
    np.testing.assert_allclose(geometry.estimate_similarity(src, dst), truth, atol=1e-9)


def test_similarity_fit_is_least_squares_under_noise():
    rng = np.random.default_rng(1)
    src = rng.uniform(0, 100, size=(5, 2))
    truth = _similarity(-8.0, 0.6, 5.0, 9.0)
    dst = geometry.transform_points(src, truth) + rng.normal(0, 0.5, size=(5, 2))
    fitted = geometry.estimate_similarity(src, dst)
    residual = np.abs(geometry.transform_points(src, fitted) - dst).mean()
    assert residual < 1.0
    # a similarity has equal singular values: no shear, no anisotropic scale
    linear = fitted[:, :2]
    assert abs(linear[0, 0] - linear[1, 1]) < 1e-9 and abs(linear[0, 1] + linear[1, 0]) < 1e-9


def test_degenerate_landmarks_are_refused():
    with pytest.raises(ValueError):
        geometry.estimate_similarity(np.ones((5, 2)), np.zeros((5, 2)))


def test_inverse_round_trips_points():
    m = _similarity(33.0, 2.5, 10.0, -4.0)
    pts = np.array([[1.0, 2.0], [100.0, -50.0]])
    back = geometry.transform_points(geometry.transform_points(pts, m), geometry.invert_affine(m))
    np.testing.assert_allclose(back, pts, atol=1e-9)


@pytest.mark.parametrize("name,size", [("arcface_112_v2", 112), ("arcface_128", 128),
                                       ("ffhq_512", 512)])
def test_template_landmarks_land_on_the_template(name, size):
    pts = geometry.template_points(name, size)
    kps = geometry.transform_points(pts, _similarity(12.0, 0.8, 40.0, 20.0))
    matrix = geometry.frame_to_crop_matrix(kps, name, size)
    np.testing.assert_allclose(geometry.transform_points(kps, matrix), pts, atol=1e-6)


def test_arcface_128_is_arcface_112_shifted_8px_in_x():
    a112 = geometry.template_points("arcface_112_v2", 112)
    a128 = geometry.template_points("arcface_128", 128)
    np.testing.assert_allclose(a128 - a112, [[8.0, 0.0]] * 5, atol=0.01)


@pytest.mark.parametrize("dtype,peak", [(np.uint8, 255), (np.uint16, 65535), (np.float32, 1.0)])
def test_warp_crop_scales_every_dtype_to_0_255(dtype, peak):
    frame = np.full((200, 200, 4), peak, dtype=dtype)
    kps = geometry.template_points("arcface_128", 128) + 30
    crop = geometry.warp_crop(frame, kps, "arcface_128", 128)
    assert crop.image.dtype == np.float32 and crop.image.shape == (128, 128, 3)
    np.testing.assert_allclose(crop.image, 255.0, atol=1e-3)
    np.testing.assert_allclose(crop.frame_to_crop[:, 2], [-30, -30], atol=1e-6)


def test_display_uint8_drops_alpha_and_rescales():
    frame = np.zeros((4, 4, 4), np.uint16)
    frame[..., 2] = 65535
    out = geometry.to_display_uint8(frame)
    assert out.shape == (4, 4, 3) and out.dtype == np.uint8
    assert out[0, 0].tolist() == [0, 0, 255]


def test_a_crop_cut_from_a_region_is_bit_identical_to_one_cut_from_the_whole_frame():
    """warp_crop(origin_xy=): the same pixels whatever the face's size, angle and position,
    faces hanging over the frame's edge included (the region then ends where the frame does)."""
    rng = np.random.default_rng(3)
    frame = rng.integers(0, 256, (540, 960, 3), np.uint8)
    template = geometry.template_points("arcface_112_v2", 112)
    for _ in range(200):
        size, angle = rng.uniform(30, 300), rng.uniform(-60, 60)
        centre = rng.uniform((-40, -40), (1000, 580))
        kps5 = geometry.transform_points(template / 112 - 0.5,
                                         _similarity(angle, size, *centre)).astype(np.float32)
        crop_to_frame = geometry.invert_affine(
            geometry.frame_to_crop_matrix(kps5, "arcface_112_v2", 112))
        corners = geometry.transform_points(
            np.array([[0, 0], [112, 0], [0, 112], [112, 112]], np.float64), crop_to_frame)
        x0, y0 = np.maximum(np.floor(corners.min(axis=0)).astype(int) - 2, 0)
        x1, y1 = np.minimum(np.ceil(corners.max(axis=0)).astype(int) + 3, (960, 540))
        if x1 <= x0 or y1 <= y0:
            continue
        whole = geometry.warp_crop(frame, kps5, "arcface_112_v2", 112)
        part = geometry.warp_crop(frame[y0:y1, x0:x1], kps5, "arcface_112_v2", 112,
                                  origin_xy=(int(x0), int(y0)))
        _assert_same_crop(part.image, whole.image)
        np.testing.assert_array_equal(part.frame_to_crop, whole.frame_to_crop)


def _assert_same_crop(part: np.ndarray, whole: np.ndarray) -> None:
    """OpenCV 4's warpAffine is shift-invariant: a crop cut from a region is the crop of the
    whole frame bit for bit. OpenCV 5's (the numpy 2 builds) computes its sample positions with
    less precision far from the origin: a region's crop differs by one level in a few tenths of
    a percent of its values (measured 0.19 %)."""
    if cv2.__version__.startswith("4."):
        np.testing.assert_array_equal(part, whole)
        return
    diff = np.abs(part.astype(np.float64) - whole)
    assert diff.max() <= 1.0 and np.count_nonzero(diff) <= 0.005 * diff.size
