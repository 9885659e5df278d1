#!/bin/sh
# Tesseract with its Japanese models, for OCR of scanned PDFs and images (app/formats/ocr.py).
# Installed with apt where apt is there and we are root (Debian/Ubuntu, the Docker image, CI);
# elsewhere nothing is installed and one line says how (scans are then skipped with that line too).
set -eu
# fonts-ipafont-gothic: the tests draw Japanese scans with it (tests/test_formats_ocr.py); without it
# they are skipped and OCR never runs for real in `make test`.
PACKAGES="tesseract-ocr tesseract-ocr-jpn tesseract-ocr-jpn-vert fonts-ipafont-gothic"
have_models() {
    command -v tesseract >/dev/null 2>&1 || return 1
    langs=$(tesseract --list-langs 2>&1) || return 1
    for lang in jpn jpn_vert eng; do
        printf '%s\n' "$langs" | grep -qx "$lang" || return 1
    done
    if command -v fc-list >/dev/null 2>&1; then fc-list | grep -qi "ipagothic" || return 1; fi
}
have_models && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null \
        || echo "OCR: could not install $PACKAGES with apt; scanned PDFs and images will be skipped" >&2
else
    echo "OCR: Tesseract is not installed (scanned PDFs and images are skipped); to read them: sudo apt-get install $PACKAGES" >&2
fi
