"""Write the malformed-and-adversarial corpus (small files) and its manifest.

Run ``python tests/data/corpus/make_corpus.py`` after changing it (it rewrites every .csv here).

Each entry of ``manifest.json`` names a file, its kind (labels, gold, sequences, sequence_gold, edges, features),
the label file it belongs to (``base``, for gold, edges and features), reader options, and the expected outcome:

- ``{"loads": N, "notes": [...]}``: reads to N observations (edges: N undirected edges; features: N items) with
  exactly one note per listed fragment (each fragment occurs in its own note), plus optional exact counts
  ("classes", "workers", "continuous", "gold");
- ``{"error": [...]}``: raises DataError whose message contains every fragment.

Big files (1 MB without a line break, 100,000 and 300,000 columns) are not written here: `BIG` describes them and
the test builds them (see ``tests/unit/test_corpus.py``).
"""

from __future__ import annotations

import codecs
import gzip
import json
import zipfile
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRIES: list[dict] = []

BASE = "item,worker,label\na,w1,x\na,w2,y\nb,w1,x\nb,w2,x\nc,w1,y\nc,w2,y\n"
BASE_ROWS = 6


def put(name: str, data: bytes | str, expect: dict, what: str = "labels", base: str | None = None, **options) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    (HERE / name).write_bytes(raw)
    entry = {"file": name, "kind": what, "expect": expect}
    if base:
        entry["base"] = base
    if options:
        entry["options"] = options
    ENTRIES.append(entry)


def loads(n: int, *notes: str, **counts) -> dict:
    return {"loads": n, "notes": list(notes), **counts}


def error(*fragments: str) -> dict:
    return {"error": list(fragments)}


def labels_corpus() -> None:
    # ---- good files in every accepted encoding and layout
    put("base.csv", BASE, loads(BASE_ROWS, classes=2, workers=2))
    put("utf8_bom.csv", codecs.BOM_UTF8 + BASE.encode(), loads(BASE_ROWS, classes=2))
    for codec, bom, tag in (
        ("utf-16-le", codecs.BOM_UTF16_LE, "utf16le"),
        ("utf-16-be", codecs.BOM_UTF16_BE, "utf16be"),
        ("utf-32-le", codecs.BOM_UTF32_LE, "utf32le"),
        ("utf-32-be", codecs.BOM_UTF32_BE, "utf32be"),
    ):
        put(f"{tag}_bom.csv", bom + BASE.encode(codec), loads(BASE_ROWS, classes=2, workers=2))
        guess = tag[:3].upper() + "-" + tag[3:5]
        put(f"{tag}_nobom.csv", BASE.encode(codec), error(guess, "without a byte-order mark"))
    put("crlf.csv", BASE.replace("\n", "\r\n"), loads(BASE_ROWS, classes=2))
    put("cr_only.csv", BASE.replace("\n", "\r"), loads(BASE_ROWS, classes=2))
    put("no_final_newline.csv", BASE.rstrip("\n"), loads(BASE_ROWS))
    put("unicode_names.csv", "item,worker,label\nété,Zoë,猫\nété,Łukasz,犬\nöl,Zoë,猫\n", loads(3, classes=2))
    put("semicolon.csv", BASE.replace(",", ";"), loads(BASE_ROWS))
    put("tab.tsv", BASE.replace(",", "\t"), loads(BASE_ROWS))
    put("spaces_around.csv", "item , worker , label\n a , w1 , x \n a , w2 , y\n b, w1 ,x\n", loads(3, classes=2))
    put("quoted.csv", 'item,worker,label\n"a,1",w1,"x"\n"a,1",w2,"y, z"\n', loads(2, classes=2))
    put("quoted_newline.csv", 'item,worker,label\n"a\nb",w1,x\nc,w2,y\n', loads(2, classes=2))
    put("leading_blank_lines.csv", "\n\n" + BASE, loads(BASE_ROWS))
    put("aliases.csv", BASE.replace("item,worker,label", "Task,Annotator,Answer"), loads(BASE_ROWS))
    put("ignored_column.csv", "item,worker,label,time\na,w1,x,1\na,w2,y,2\n", loads(2, "Ignored 1 column: 'time'"))
    put("long_text_label.csv", f"item,worker,label\na,w1,{'x' * 10000}\na,w2,y\n", loads(2, classes=2))
    put("leading_zero_workers.csv", "item,worker,label\na,007,x\na,7,y\n", loads(2, workers=2))
    # ---- the file is not what it says
    put("empty.csv", b"", error("empty (0 bytes)"))
    put("blank_only.csv", "\n\n  \n", error("only blank lines"))
    put("header_only.csv", "item,worker,label\n", error("no data rows"))
    put("one_column.csv", "item worker label\na w1 x\n", error("only one column"))
    put("pipe_separated.csv", "item|worker|label\na|w1|x\n", error("only one column"))
    jsonl = '{"item": "a", "worker": "w1", "label": "x"}\n{"item": "a", "worker": "w2"}\n'
    put("json_lines.csv", jsonl, error("JSON lines"))
    put("json_array.csv", '[{"item": "a", "worker": "w1", "label": "x"}]', error("JSON"))
    put("html.csv", "<!DOCTYPE html><html><body>404</body></html>", error("HTML"))
    put("xml.csv", '<?xml version="1.0"?><rows/>', error("XML"))
    put("gzip.csv", gzip.compress(BASE.encode(), mtime=0), error("gzip archive", "Decompress it first"))
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("[Content_Types].xml", (2020, 1, 1, 0, 0, 0)), "<Types/>")
        z.writestr(zipfile.ZipInfo("xl/workbook.xml", (2020, 1, 1, 0, 0, 0)), "<workbook/>")
    put("xlsx_renamed.csv", buf.getvalue(), error("Excel .xlsx workbook", "save it as CSV"))
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("labels.csv", (2020, 1, 1, 0, 0, 0)), BASE)
    put("zip.csv", buf.getvalue(), error("ZIP archive", "Unzip it"))
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype", (2020, 1, 1, 0, 0, 0)), "application/vnd.oasis.opendocument.spreadsheet")
    put("ods.csv", buf.getvalue(), error("OpenDocument"))
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("word/document.xml", (2020, 1, 1, 0, 0, 0)), "<w/>")
    put("docx.csv", buf.getvalue(), error("Word .docx"))
    for name, magic, what in (
        ("xls.csv", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64, "old Excel .xls"),
        ("pdf.csv", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF document"),
        ("png.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG image"),
        ("jpeg.csv", b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG image"),
        ("gif.csv", b"GIF89a\x01\x00\x01\x00", "GIF image"),
        ("parquet.csv", b"PAR1\x15\x04\x15\x10", "Parquet file"),
        ("feather.csv", b"ARROW1\x00\x00", "Arrow/Feather"),
        ("sqlite.csv", b"SQLite format 3\x00\x10\x00", "SQLite database"),
        ("hdf5.csv", b"\x89HDF\r\n\x1a\n", "HDF5 file"),
        ("npy.csv", b"\x93NUMPY\x01\x00v\x00", "NumPy .npy"),
        ("bzip2.csv", b"BZh91AY&SY\x00\x00", "bzip2 archive"),
        ("xz.csv", b"\xfd7zXZ\x00\x00\x04", "xz archive"),
        ("zstd.csv", b"\x28\xb5\x2f\xfd\x04\x00", "Zstandard archive"),
        ("7z.csv", b"7z\xbc\xaf\x27\x1c\x00\x04", "7-Zip archive"),
        ("rar.csv", b"Rar!\x1a\x07\x01\x00", "RAR archive"),
        ("rtf.csv", b"{\\rtf1\\ansi item,worker,label}", "RTF document"),
    ):
        put(name, magic, error(what))
    # ---- encoding damage anywhere in the file
    late = "".join(f"i{k},w{k % 3},{'xy'[k % 2]}\n" for k in range(600))
    latin1 = "item,worker,label\na,Ren\xe9,x\nb,w2,y\n".encode("latin-1")
    put("latin1.csv", latin1, error("not UTF-8", "row 2", "worker"))
    put(
        "cp1252_late.csv",
        ("item,worker,label\n" + late).encode() + "z,Ren\xe9,x\n".encode("cp1252"),
        error("not UTF-8", "row 602"),
    )
    put(
        "nul_after_4k.csv",
        ("item,worker,label\n" + late).encode() + b"z,w\x001,x\n",
        error("NUL", "row 602", "column 'worker'"),
    )
    put("nul_in_header.csv", b"item,wor\x00ker,label\na,w1,x\n", error("NUL", "row 1", "in the header"))
    put("binary_garbage.csv", bytes(range(256)) * 8, error("binary data"))
    put(
        "utf16_bom_broken.csv",
        codecs.BOM_UTF16_LE + "item,worker,label\n".encode("utf-16-le") + b"\x00\xd8",
        error("UTF-16"),
    )
    # real UTF-16 cut short by one byte: still called broken UTF-16, not 8-bit text behind a stray mark
    put(
        "utf16_truncated.csv",
        ("item,worker,label\na,w1,x\na,w2,y\nb,w1,x\n").encode("utf-16")[:-1],
        error("starts like UTF-16 text but is not", "row 4"),
    )
    # a UTF-16 byte-order mark in front of UTF-8 text (an even byte count decodes, as one column of CJK characters)
    put(
        "utf16_bom_on_utf8.csv",
        codecs.BOM_UTF16_LE + b"item,worker,label\na,w1,x\na,w2,y\nb,w1,xy\n",
        error("UTF-16 byte-order mark", "8-bit (UTF-8 or ASCII)", "remove its first 2 bytes"),
    )
    put(
        "utf32_bom_on_utf8.csv",
        codecs.BOM_UTF32_LE + b"item,worker,label\na,w1,x\na,w2,y\nb,w1,xyzabc\n",
        error("UTF-32 byte-order mark", "remove its first 4 bytes"),
    )
    # ---- rows and cells
    put("blank_rows.csv", "item,worker,label\na,w1,x\n\n,,\na,w2,y\n", loads(2, "Skipped 2 empty rows (rows 3, 4)"))
    put("header_repeated.csv", BASE + BASE, loads(2 * BASE_ROWS, "repeat the header row (row 8)"))
    put(
        "header_repeated_spaced.csv",
        BASE + " item , worker , label \n" + BASE.split("\n", 1)[1],
        loads(2 * BASE_ROWS, "repeat the header row (row 8)"),
    )
    put("ragged_row.csv", "item,worker,label\na,w1,x\na,w2,y,extra\n", error("4 cells", "header has 3", "row 3"))
    put("short_row.csv", "item,worker,label\na,w1,x\na,w2\n", error("blank or NaN label", "row 3"))
    put("unclosed_quote.csv", 'item,worker,label\na,w1,"x\na,w2,y\n', error("never closed"))
    put("blank_item.csv", "item,worker,label\na,w1,x\n,w2,y\n", error("blank item id", "row 3"))
    put("blank_worker.csv", "item,worker,label\na,w1,x\nb,,y\n", error("blank worker id", "row 3"))
    put("two_label_columns.csv", "item,worker,label,answer\na,w1,x,y\n", error("more than one column"))
    put("missing_worker_column.csv", "item,label\na,x\n", error("no worker column"))
    put(
        "zero_width_around.csv",
        "item,worker,label\na,w1,x\u200b\na,w2,\u200by\nb,w1,x\n",
        loads(3, "invisible characters", classes=2),
    )
    # ---- labels that spell a missing value
    for name, token in (
        ("label_None.csv", "None"),
        ("label_none_lower.csv", "none"),
        ("label_NULL.csv", "NULL"),
        ("label_nUlL.csv", "nUlL"),
        ("label_dash.csv", "-"),
        ("label_NA.csv", "NA"),
        ("label_nan.csv", "nan"),
        ("label_n_a.csv", "n/a"),
        ("label_zero_width.csv", "\u200b"),
        ("label_nbsp.csv", "\xa0"),
    ):
        put(name, f"item,worker,label\na,w1,x\na,w2,{token}\nb,w1,y\n", error("row 3", "label"))
    put(
        "wide_missing_spellings.csv",
        "item,w1,w2,w3\na,x,None,y\nb,NULL,x,-\nc,y,y,x\n",
        loads(6, "spelled like a missing value", "Read as a wide table", classes=2, workers=3),
    )
    # ---- numbers
    big = 2**53
    huge = f"item,worker,label\na,w1,{big}\na,w2,{big + 1}\nb,w1,{big}\n"
    put("int_labels_beyond_2_53.csv", huge, loads(3, classes=2))
    put("number_spellings.csv", "item,worker,label\na,w1,1\na,w2,1.0\nb,w1,2\n", loads(3, "same number", classes=2))
    affect = "".join(f"i{k // 3},w{k % 3},{(k * 7) % 61 - 30}\n" for k in range(90))
    put("affect_like.csv", "item,worker,label\n" + affect, loads(90, "continuous scores", continuous=True))
    put("affect_like_as_classes.csv", "item,worker,label\n" + affect, loads(90, classes=61), kind="classes")
    few = "".join(f"i{k // 3},w{k % 3},{k % 5}\n" for k in range(30))
    put("five_numeric_classes.csv", "item,worker,label\n" + few, loads(30, classes=5))
    put("score_1e308.csv", "item,worker,score\na,w1,1e308\na,w2,3\n", error("larger in size", "row 2", "score"))
    put("score_1e13.csv", "item,worker,score\na,w1,1e13\na,w2,3\n", error("larger in size", "max_abs_value"))
    put("score_inf.csv", "item,worker,score\na,w1,inf\na,w2,3\n", error("not a number", "row 2"))
    put("score_nan.csv", "item,worker,score\na,w1,3\na,w2,NaN\n", error("row 3", "score"))
    put("score_hex.csv", "item,worker,score\na,w1,0x10\na,w2,3\n", error("not a number", "'0x10'"))
    put("score_thousands.csv", 'item,worker,score\na,w1,"1,000"\na,w2,3\n', error("not a number", "'1,000'"))
    put("score_decimal_comma.csv", "item;worker;score\na;w1;3,5\na;w2;-0\nb;w1;00\n", loads(3, continuous=True))
    put("score_negative_zero.csv", "item,worker,score\na,w1,-0\na,w2,1e12\n", loads(2, continuous=True))
    classes = "".join(f"i{k},w{k % 7},c{k}\n" for k in range(1000))
    put("classes_1000.csv", "item,worker,label\n" + classes, error("1,000 classes", "max_classes"))
    num_classes = "".join(f"i{k},w{k % 7},{k}\n" for k in range(1000))
    put(
        "numeric_classes_1000_as_classes.csv",
        "item,worker,label\n" + num_classes,
        error("1,000 classes", "max_classes"),
        kind="classes",
    )
    put("single_class.csv", "item,worker,label\na,w1,x\nb,w2,x\n", error("same class"))
    put("wide_ok.csv", "item,w1,w2\na,x,y\nb,,x\nc,y,\n", loads(4, "Read as a wide table", workers=2))
    put("wide_duplicate_worker.csv", "item,w1,w1\na,x,y\n", error("two columns"))
    put("wide_scores_1e308.csv", "item,w1,w2\na,1e308,3\n", error("larger in size"), kind="continuous")
    put("long_gold_conflict.csv", "item,worker,label,gold\na,w1,x,x\na,w2,y,y\n", error("conflicting gold"))


def gold_corpus() -> None:
    put("gold_ok.csv", "item,label\na,x\nb,y\n", loads(BASE_ROWS, gold=2), what="gold", base="base.csv")
    put("gold_conflict.csv", "item,label\na,x\na,y\n", error("conflicting gold"), what="gold", base="base.csv")
    put("gold_is_labels.csv", BASE, error("label file, not a gold file"), what="gold", base="base.csv")
    put("gold_unknown_item.csv", "item,label\nzz,x\n", error("no labels", "'zz'"), what="gold", base="base.csv")
    put(
        "gold_none.csv",
        "item,label\na,x\nb,None\n",
        loads(BASE_ROWS, "blank label read as unknown", gold=1),
        what="gold",
        base="base.csv",
    )
    put(
        "gold_header_only.csv",
        "item,label\n",
        loads(BASE_ROWS, "no rows; no gold attached", gold=0),
        what="gold",
        base="base.csv",
    )
    put("gold_gzip.csv", gzip.compress(b"item,label\na,x\n", mtime=0), error("gzip"), what="gold", base="base.csv")
    put("scores_base.csv", "item,worker,score\na,w1,1\na,w2,2\nb,w1,3\n", loads(3, continuous=True))
    put("gold_score_1e308.csv", "item,label\na,1e308\n", error("larger in size"), what="gold", base="scores_base.csv")
    put(
        "gold_utf16.csv",
        codecs.BOM_UTF16_LE + "item,label\na,x\n".encode("utf-16-le"),
        loads(BASE_ROWS, gold=1),
        what="gold",
        base="base.csv",
    )


SEQ = "sequence,position,worker,label\ns1,0,w1,A\ns1,1,w1,B\ns1,0,w2,A\ns1,1,w2,A\ns2,0,w1,B\ns2,1,w2,B\n"


def sequence_corpus() -> None:
    put("seq_ok.csv", SEQ, loads(6, classes=2), what="sequences")
    put("seq_gap_1e9.csv", SEQ + "s2,1000000000,w1,A\n", error("gap of", "max_position_gap", "row 8"), what="sequences")
    put(
        "seq_beyond_int64.csv", SEQ + "s2,99999999999999999999,w1,A\n", error("max_position", "row 8"), what="sequences"
    )
    put("seq_negative.csv", SEQ + "s2,-1,w1,A\n", error("not a whole number", "row 8"), what="sequences")
    put("seq_fraction.csv", SEQ + "s2,1.5,w1,A\n", error("not a whole number", "'1.5'"), what="sequences")
    put(
        "seq_small_gap.csv",
        SEQ + "s2,4,w1,A\n",
        loads(7, "2 positions inside sequences had no labels"),
        what="sequences",
    )
    put("seq_none_label.csv", SEQ + "s2,2,w1,None\n", error("missing value", "row 8"), what="sequences")
    put("seq_header_repeated.csv", SEQ + SEQ, loads(12, "repeat the header row (row 8)"), what="sequences")
    seq_classes = "".join(f"s1,{k},w1,t{k}\n" for k in range(1000))
    put(
        "seq_1000_classes.csv", "sequence,position,worker,label\n" + seq_classes, error("max_classes"), what="sequences"
    )
    put("seq_gzip.csv", gzip.compress(SEQ.encode(), mtime=0), error("gzip"), what="sequences")
    put(
        "seq_gold_ok.csv",
        "sequence,position,label\ns1,0,A\ns2,1,B\n",
        loads(6, gold=2),
        what="sequence_gold",
        base="seq_ok.csv",
    )
    put(
        "seq_gold_conflict.csv",
        "sequence,position,label\ns1,0,A\ns1,0,B\n",
        error("contradicts", "rows 2, 3"),
        what="sequence_gold",
        base="seq_ok.csv",
    )
    put(
        "seq_gold_repeated.csv",
        "sequence,position,label\ns1,0,A\ns1,0,A\n",
        loads(6, "read once", gold=1),
        what="sequence_gold",
        base="seq_ok.csv",
    )
    put("seq_gold_is_labels.csv", SEQ, error("label file, not a gold file"), what="sequence_gold", base="seq_ok.csv")
    put(
        "seq_gold_unknown.csv",
        "sequence,position,label\ns9,0,A\n",
        error("no crowd labels"),
        what="sequence_gold",
        base="seq_ok.csv",
    )


def edges_corpus() -> None:
    put("edges_ok.csv", "source,target\na,b\nb,c\n", loads(2), what="edges", base="base.csv")
    put("edges_no_header.csv", "a,b\nb,c\n", loads(2, "no header"), what="edges", base="base.csv")
    put(
        "edges_unnamed_columns.csv",
        "from_item,to_item\na,b\nb,c\n",
        loads(2, "no column named source/target"),
        what="edges",
        base="base.csv",
    )
    put(
        "edges_weight_1e308.csv",
        "source,target,weight\na,b,1e308\n",
        error("max_weight", "row 2"),
        what="edges",
        base="base.csv",
    )
    put(
        "edges_weight_zero.csv",
        "source,target,weight\na,b,0\n",
        error("weight", "row 2"),
        what="edges",
        base="base.csv",
    )
    put(
        "edges_weight_nan.csv",
        "source,target,weight\na,b,nan\nb,c,1\n",
        error("weight", "row 2"),
        what="edges",
        base="base.csv",
    )
    put("edges_unknown.csv", "source,target\na,zz\n", error("no labels", "row 2"), what="edges", base="base.csv")
    put("edges_self_loop.csv", "source,target\na,a\na,b\n", loads(1, "self-loop"), what="edges", base="base.csv")
    put("edges_gzip.csv", gzip.compress(b"source,target\na,b\n", mtime=0), error("gzip"), what="edges", base="base.csv")
    put(
        "edges_header_repeated.csv",
        "source,target\na,b\nsource,target\nb,c\n",
        loads(2, "repeat the header"),
        what="edges",
        base="base.csv",
    )


def features_corpus() -> None:
    put("features_ok.csv", "item,f1,f2\na,1,2\nb,3,4\nc,5,6\n", loads(3), what="features", base="base.csv")
    put(
        "features_1e308.csv",
        "item,f1\na,1e308\nb,1\nc,2\n",
        error("max_abs_value", "row 2"),
        what="features",
        base="base.csv",
    )
    put(
        "features_nan.csv",
        "item,f1\na,nan\nb,1\nc,2\n",
        error("not a number", "row 2"),
        what="features",
        base="base.csv",
    )
    put(
        "features_utf16.csv",
        codecs.BOM_UTF16_LE + "item,f1\na,1\nb,2\nc,3\n".encode("utf-16-le"),
        loads(3),
        what="features",
        base="base.csv",
    )
    put(
        "features_missing_item.csv",
        "item,f1\na,1\nb,2\n",
        error("no row of features", "'c'"),
        what="features",
        base="base.csv",
    )
    put("features_json.csv", '{"item": "a", "f1": 1}\n', error("JSON"), what="features", base="base.csv")


BIG = {
    "no_newline_1mb.csv": error("no line breaks"),
    "no_newline_1mb_commas.csv": error("max_columns"),
    "no_newline_1mb_long_cell.csv": error("no data rows", "no line break"),
    "wide_100k_workers.csv": loads(200_000, "Read as a wide table", workers=100_000, classes=2),
    "wide_300k_columns.csv": error("max_columns"),
}


def main() -> None:
    for old in HERE.iterdir():
        if old.suffix in (".csv", ".tsv"):
            old.unlink()
    labels_corpus()
    gold_corpus()
    sequence_corpus()
    edges_corpus()
    features_corpus()
    names = [e["file"] for e in ENTRIES]
    assert len(names) == len(set(names)), "duplicate corpus file names"
    (HERE / "manifest.json").write_text(json.dumps({"files": ENTRIES, "big": BIG}, indent=1, ensure_ascii=True) + "\n")
    print(f"wrote {len(ENTRIES)} files and manifest.json ({len(BIG)} big files are built by the test)")


if __name__ == "__main__":
    main()
