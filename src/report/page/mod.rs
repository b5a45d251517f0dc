//! The pages and pictures: a run's report page ([`html`]), the page that sets two runs side
//! by side ([`compare`], whose text form the terminal prints too; [`beside_live`] when one is
//! a live run), and the charts ([`charts`]) drawn as SVG by our own writer ([`svg`]).

pub mod beside_live;
pub mod charts;
pub mod compare;
pub mod html;
pub mod svg;
