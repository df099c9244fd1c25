"""Pictures of uploaded class items (crowdlab.classroom.items.read_item_set): each is decoded, checked and made
small once at upload; anything a phone could not draw (an SVG or text named .png, a truncated PNG, a decompression
bomb, a picture of too many pixels) is refused there with a sentence, never an exception on every phone."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import pytest
from PIL import Image

from crowdlab.classroom import items as ci
from crowdlab.errors import DataError


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _csv(name: str) -> bytes:
    return f"item_id,prompt,image\nq1,What is it?,{name}\nq2,And this?,\n".encode()


def _read(name: str, data: bytes):
    return ci.read_item_set(io.BytesIO(_csv(name)), ["yes", "no"], _zip({name: data}))


def _png(w: int, h: int, mode: str = "RGB", color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new(mode, (w, h), color).save(out, format="PNG")
    return out.getvalue()


def _huge_png(w: int, h: int) -> bytes:
    """A real 1-bit PNG of w x h blank pixels, compressed row by row (20000 x 20000: about 50 kB)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    z = zlib.compressobj(9)
    row = b"\x00" * (1 + (w + 7) // 8)
    body = b"".join(z.compress(row) for _ in range(h)) + z.flush()
    ihdr = struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def test_a_good_picture_is_stored_small_and_decodes():
    items = _read("big.png", _png(1600, 900))
    img = Image.open(io.BytesIO(items[0].image))
    assert img.format == "PNG" and max(img.size) == ci.IMAGE_SIDE and img.size == (480, 270)
    assert items[1].image is None
    photo = io.BytesIO()
    Image.new("RGB", (800, 600), (10, 120, 40)).save(photo, format="JPEG")
    stored = _read("photo.jpg", photo.getvalue())[0].image
    assert Image.open(io.BytesIO(stored)).format == "JPEG" and len(stored) < len(photo.getvalue())
    gif = io.BytesIO()
    Image.new("P", (64, 64)).save(gif, format="GIF")
    small = Image.open(io.BytesIO(_read("a.gif", gif.getvalue())[0].image))
    assert small.size == (64, 64)  # never enlarged


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        ("pic.png", b'<svg xmlns="http://www.w3.org/2000/svg"><circle r="5"/></svg>', "is not a PNG, JPEG or GIF"),
        ("pic.png", b"just some text, not a picture\n", "is not a PNG, JPEG or GIF"),
        ("pic.jpg", b"", "is not a PNG, JPEG or GIF"),
        ("pic.png", _png(300, 300)[:200], "is damaged"),
        ("bomb.png", _huge_png(20000, 20000), "has more pixels than a picture may"),
        ("wide.png", _huge_png(6000, 6000), "is 6,000 x 6,000 pixels; a picture may have at most 25,000,000"),
    ],
)
def test_a_picture_no_phone_could_draw_is_refused_at_upload(name, data, said):
    if name == "bomb.png":
        assert len(_zip({name: data})) < 100_000  # a small upload that would be 400 megapixels
    with pytest.raises(DataError) as exc:
        _read(name, data)
    assert said in str(exc.value) and name in str(exc.value) and "Use PNG, JPEG or GIF pictures" in str(exc.value)
