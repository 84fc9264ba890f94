//! XLSX: every sheet's cells, row by row, read as a stream (calamine's cell reader; the sheet
//! is never held whole), each sheet headed by its name, each row a line of cells apart by
//! ` | `, rows grouped in paragraphs of [`ROWS_PER_PARAGRAPH`]. At most [`MAX_CELLS`] cells.
//! A workbook has no pages: its text has none.

use calamine::{Reader, Xlsx};

use crate::Bounded;

/// The most cells read, all sheets together.
pub const MAX_CELLS: usize = 2_000_000;
/// Rows per paragraph: a table cut into chunks keeps whole rows together.
const ROWS_PER_PARAGRAPH: usize = 10;

/// The workbook's text.
pub fn text(content: &[u8]) -> Result<String, String> {
    // The same checks as a DOCX's: a zip file first.
    crate::zip_archive(content, "XLSX")?;
    let mut workbook: Xlsx<_> = Xlsx::new(std::io::Cursor::new(content))
        .map_err(|e| format!("not a readable XLSX file: {e}"))?;
    let mut out = Bounded::new();
    let mut cells = 0usize;
    for name in workbook.sheet_names() {
        out.push(&format!("Sheet: {name}\n\n"))?;
        let mut reader = workbook
            .worksheet_cells_reader(&name)
            .map_err(|e| format!("sheet {name:?} cannot be read: {e}"))?;
        let (mut row, mut line, mut rows) = (None, String::new(), 0usize);
        while let Some(cell) = reader
            .next_cell()
            .map_err(|e| format!("sheet {name:?} cannot be read: {e}"))?
        {
            cells += 1;
            if cells > MAX_CELLS {
                return Err(format!(
                    "it has more than {MAX_CELLS} cells; at most that many are read"
                ));
            }
            let (r, _) = cell.get_position();
            if row.is_some_and(|last| last != r) {
                rows += 1;
                end_row(&mut out, &mut line, rows)?;
            }
            row = Some(r);
            let value = calamine::Data::from(cell.get_value().clone()).to_string();
            if !value.is_empty() {
                if !line.is_empty() {
                    line.push_str(" | ");
                }
                line.push_str(&value);
            }
        }
        end_row(&mut out, &mut line, rows + 1)?;
        out.push("\n\n")?;
    }
    Ok(out.text.trim().to_string())
}

/// Ends a row's line: a line of its own, a paragraph's end every [`ROWS_PER_PARAGRAPH`].
fn end_row(out: &mut Bounded, line: &mut String, rows: usize) -> Result<(), String> {
    if !line.is_empty() {
        out.push(line)?;
        out.push(if rows % ROWS_PER_PARAGRAPH == 0 {
            "\n\n"
        } else {
            "\n"
        })?;
        line.clear();
    }
    Ok(())
}
