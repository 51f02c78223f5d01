//! The terminal format, for people: each result's table as it comes and the claims
//! overview at the end; a comparison's table. The binary prints it through its one
//! path to standard output, and says how wide the terminal is.
//!
//! The tables and paragraphs escape every field as they are assembled
//! (`crate::table`); each piece is shown through `oslab_term_text::lines` once more
//! on its way out, so a renderer added later that forgets cannot put a control
//! character on the terminal (oslab's own text holds none but the newline).

use oslab_model::compare::Comparison;
use oslab_term_text::lines;

use crate::exporter::{ExportError, Exporter, Piece, Results, Shape, Stage};
use crate::table::{Width, render_result, render_verdicts};

/// Tables on standard output (every command, unless its JSON goes there instead),
/// `width` columns wide.
pub struct Terminal {
    pub width: Width,
}

impl Exporter<Results> for Terminal {
    fn shape(&self) -> Shape {
        Shape::Pieces
    }
    fn serialize(&mut self, doc: &Results, stage: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(match stage {
            Stage::Added => doc
                .newest()
                .map(|r| Piece::whole(lines(&render_result(r, self.width)) + "\n"))
                .into_iter()
                .collect(),
            Stage::Done if doc.all.iter().any(|r| !r.claims.is_empty()) => {
                vec![Piece::whole(format!(
                    "Claims\n{}\n",
                    lines(&render_verdicts(&doc.all, self.width))
                ))]
            }
            Stage::Done => Vec::new(),
        })
    }
}

impl Exporter<Comparison> for Terminal {
    fn shape(&self) -> Shape {
        Shape::Pieces
    }
    fn serialize(&mut self, c: &Comparison, _: Stage) -> Result<Vec<Piece>, ExportError> {
        Ok(vec![Piece::whole(lines(&crate::compare::text(
            c, self.width,
        )))])
    }
}
