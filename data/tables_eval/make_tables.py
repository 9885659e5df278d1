"""Rebuild the four tables of data/tables_eval/data/csv from the public repositories' snapshots.

Run with the snapshots as git directories (``git clone --bare``): MIRROR/<owner>+<name>/repo. What each
table keeps and changes is in README.md; the values are the sources' own.
"""

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

MIRROR = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror")
OUT = Path(__file__).parent / "data" / "csv"
MONTHS = {m: i for i, m in enumerate(
    "January February March April May June July August September October November December".split(), 1)}


def show(repo: str, path: str) -> str:
    git = MIRROR / repo / "repo"
    git = git / ".git" if (git / ".git").exists() else git
    raw = subprocess.run(["git", f"--git-dir={git}", "show", f"HEAD:{path}"], capture_output=True, check=True).stdout
    return raw.decode("utf-8-sig")


def write(name: str, header: list[str], rows: list[list[str]]) -> None:
    with (OUT / name).open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(name, len(rows), "rows")


def prefectures() -> None:
    rows = list(csv.reader(io.StringIO(show("code4fukui+localgovjp", "prefjp-utf8.csv"))))
    header = ["都道府県ID", "都道府県名", "都道府県名よみ", "略称", "略称よみ", "英語名", "3文字コード",
              "ホームページURL", "地方公共団体コード", "ISO 3166-2", "県庁所在地", "緯度", "経度"]
    write("都道府県コード一覧.csv", header, rows[1:])


def municipalities() -> None:
    rows = list(csv.reader(io.StringIO(show("code4fukui+localgovjp", "localgovjp-utf8.csv"))))
    header = ["都道府県ID", "都道府県名", "市区町村ID", "市区町村名", "市区町村名よみ", "緯度", "経度",
              "自治体ホームページURL", "キャッチフレーズ", "全国地方公共団体コード"]
    keep = [r for r in rows[1:] if r[1] in ("富山県", "石川県", "福井県")]
    write("北陸の市町村一覧.csv", header, keep)


def eras() -> None:
    text = show("deadcheat+gengou", "const.go")
    date = r"time\.Date\((\d+), time\.(\w+), (\d+),"
    found = re.findall(r'Name: "([^"]+)",\s*Kana: \[\]string\{"([^"]+)"[^}]*\},\s*From: ' + date + r".*?\s*To: +" + date, text)
    rows = []
    for name, kana, fy, fm, fd, ty, tm, td in found:
        if int(fy) < 1596:
            continue
        end = "" if int(ty) == 2100 else f"{ty}年{MONTHS[tm]}月{int(td)}日"  # 2100-01-01: the source's "no end yet"
        rows.append([name, kana, f"{fy}年{MONTHS[fm]}月{int(fd)}日", end])
    write("元号一覧.csv", ["元号", "読み", "開始日", "終了日"], rows)


def population() -> None:
    rows = list(csv.reader(io.StringIO(show("kota-tagami+JLSTAT-table", "Population/Table/total_prefecture.csv"))))
    keep = [r for r in rows[1:] if int(r[4].rstrip("年")) >= 2000]
    write("都道府県別人口_国勢調査.csv", rows[0], keep)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    prefectures(), municipalities(), eras(), population()
