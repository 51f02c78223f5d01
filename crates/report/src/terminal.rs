//! The terminal format, for people: each result's table as it comes and the claims
//! overview at the end; a comparison's table. The binary prints it through its one
//! path to standard output, and says how wide the terminal is.

use oslab_model::compare::Comparison;

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
                .map(|r| Piece::whole(render_result(r, self.width) + "\n"))
                .into_iter()
                .collect(),
            Stage::Done if doc.all.iter().any(|r| !r.claims.is_empty()) => {
                vec![Piece::whole(format!(
                    "Claims\n{}\n",
                    render_verdicts(&doc.all, self.width)
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
        Ok(vec![Piece::whole(crate::compare::text(c, self.width))])
    }
}
