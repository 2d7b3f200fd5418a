//! A GFM table being read by [`markdown`](super::markdown): at most
//! [`MAX_COLUMNS`] columns, each cell written inert as it ends, every row as many cells as
//! the header, so no cell of the input becomes a column or vanishes silently.

use super::MAX_COLUMNS;
use super::blocks::Block;
use super::inline::Inline;
use pulldown_cmark::Alignment;

/// A table being read: at most [`MAX_COLUMNS`] columns, each cell written as it ends.
pub(super) struct Table {
    aligns: Vec<Alignment>,
    pub(super) hidden_columns: usize,
    head: Vec<String>,
    rows: Vec<(String, usize)>,
    row: Vec<String>,
    row_start: usize,
    column: usize,
    pub(super) cell: Option<Inline>,
}

impl Table {
    pub(super) fn new(mut aligns: Vec<Alignment>) -> Self {
        let hidden_columns = aligns.len().saturating_sub(MAX_COLUMNS);
        aligns.truncate(MAX_COLUMNS);
        Table {
            aligns,
            hidden_columns,
            head: Vec::new(),
            rows: Vec::new(),
            row: Vec::new(),
            row_start: 0,
            column: 0,
            cell: None,
        }
    }

    pub(super) fn start_row(&mut self, at: usize) {
        self.row.clear();
        self.row_start = at;
        self.column = 0;
    }

    pub(super) fn start_cell(&mut self) {
        self.cell = (self.column < self.aligns.len()).then(Inline::cell);
        self.column += 1;
    }

    pub(super) fn end_cell(&mut self) {
        if let Some(cell) = self.cell.take() {
            self.row.push(cell.finish_cell());
        }
    }

    pub(super) fn end_row(&mut self, head: bool) {
        let row = std::mem::take(&mut self.row);
        if head {
            self.head = row;
        } else {
            let line = self.line(&row);
            self.rows.push((line, self.row_start));
        }
    }

    /// One row, as many cells as the header has.
    fn line(&self, cells: &[String]) -> String {
        let mut line = String::from("|");
        for column in 0..self.aligns.len() {
            match cells.get(column).filter(|cell| !cell.is_empty()) {
                Some(cell) => {
                    line.push(' ');
                    line.push_str(cell);
                    line.push_str(" |");
                }
                None => line.push_str(" |"),
            }
        }
        line
    }

    pub(super) fn finish(self) -> Block {
        let mut delimiter = String::from("|");
        for align in &self.aligns {
            delimiter.push_str(match align {
                Alignment::None => " --- |",
                Alignment::Left => " :-- |",
                Alignment::Center => " :-: |",
                Alignment::Right => " --: |",
            });
        }
        Block::Table {
            head: self.line(&self.head),
            delimiter,
            rows: self.rows,
        }
    }
}
