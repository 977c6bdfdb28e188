//! The user's own images as a network's input: what an accuracy cost means for a trained
//! network (int8's ranges calibrated on real images, top-1 agreement with f32 measured on
//! them) where random images only show the arithmetic. Each image is read (JPEG or PNG),
//! made RGB, and prepared as torchvision prepares ImageNet for evaluation: its shorter
//! side resized to 256/224 of the input's (bilinear, antialiased), the centre cropped to
//! the input's size, the values scaled to 0–1 and normalised with ImageNet's mean and
//! standard deviation per channel.

use anyhow::{anyhow, Context, Result};
use cnnbench_graph::HostTensor;
use image::imageops::FilterType;
use std::path::{Path, PathBuf};

/// At most this many images are read from a folder (each is kept prepared in memory:
/// 0.6 MB at 224×224).
pub const MAX_IMAGES: usize = 1000;

/// ImageNet's per-channel mean and standard deviation (RGB), as torchvision normalises.
const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// The files read as images, by their extension (any case).
const EXTENSIONS: [&str; 3] = ["jpg", "jpeg", "png"];

/// A folder of images, prepared for a network's input.
#[derive(Clone, Debug)]
pub struct ImageFolder {
    /// The folder, as given.
    pub folder: PathBuf,
    /// The files' names, in the order the images are used (sorted by name).
    pub names: Vec<String>,
    /// Each image prepared, channels × height × width.
    images: Vec<Vec<f32>>,
    /// The network's input: channels, height, width.
    shape: [usize; 3],
}

impl ImageFolder {
    /// Reads the JPEG and PNG files of `folder` (sorted by name; other files are left
    /// alone; at most [`MAX_IMAGES`]) prepared for an input of `shape` (3 channels).
    pub fn load(folder: &Path, shape: [usize; 3]) -> Result<Self> {
        let [channels, height, width] = shape;
        if channels != 3 {
            return Err(anyhow!(
                "the network takes {channels} input channels; images are read as RGB (3)"
            ));
        }
        let entries = std::fs::read_dir(folder)
            .with_context(|| format!("cannot read the image folder {}", folder.display()))?;
        let mut files = Vec::new();
        for entry in entries {
            let path = entry
                .with_context(|| format!("cannot read the image folder {}", folder.display()))?
                .path();
            let is_image = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.iter().any(|x| e.eq_ignore_ascii_case(x)));
            if is_image && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        if files.is_empty() {
            return Err(anyhow!(
                "no images in {}: cnnbench reads its .jpg, .jpeg and .png files",
                folder.display()
            ));
        }
        if files.len() > MAX_IMAGES {
            return Err(anyhow!(
                "{} holds {} images; cnnbench reads at most {MAX_IMAGES} (each is kept in memory): give a folder with fewer",
                folder.display(),
                files.len()
            ));
        }
        let mut names = Vec::with_capacity(files.len());
        let mut images = Vec::with_capacity(files.len());
        for file in &files {
            let decoded = image::ImageReader::open(file)
                .and_then(|reader| reader.with_guessed_format())
                .map_err(anyhow::Error::from)
                .and_then(|reader| reader.decode().map_err(anyhow::Error::from))
                .with_context(|| format!("cannot read the image {}", file.display()))?;
            images.push(prepare(&decoded.to_rgb8(), [height, width]));
            names.push(
                file.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
        Ok(ImageFolder {
            folder: folder.to_path_buf(),
            names,
            images,
            shape,
        })
    }

    /// How many images the folder gave.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Always false: a folder without images is refused when loaded.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Images `first..first + count` as one batch; past the last image the batch is
    /// filled with the first images again (a session's batch size is fixed), so only its
    /// first `self.len() - first` images are the ones asked for.
    pub fn batch(&self, first: usize, count: usize) -> HostTensor {
        let [c, h, w] = self.shape;
        let mut data = Vec::with_capacity(count * c * h * w);
        for i in 0..count {
            data.extend_from_slice(&self.images[(first + i) % self.images.len()]);
        }
        HostTensor {
            shape: vec![count, c, h, w],
            data,
        }
    }

    /// The folder in words, for records: `N images from FOLDER`.
    pub fn describe(&self, count: usize) -> String {
        format!("{count} images from {}", self.folder.display())
    }
}

/// One RGB image prepared for an input of `[height, width]`: resized so that it covers
/// 256/224 of the input on both sides (its aspect kept), the centre cropped, scaled to
/// 0–1 and normalised; channels first.
pub fn prepare(image: &image::RgbImage, [height, width]: [usize; 2]) -> Vec<f32> {
    let (image_width, image_height) = (image.width().max(1) as f64, image.height().max(1) as f64);
    let scale = (height as f64 * 256.0 / 224.0 / image_height)
        .max(width as f64 * 256.0 / 224.0 / image_width);
    let resized_width = ((image_width * scale).round() as u32).max(width as u32);
    let resized_height = ((image_height * scale).round() as u32).max(height as u32);
    let resized =
        image::imageops::resize(image, resized_width, resized_height, FilterType::Triangle);
    let left = (resized_width as usize - width) / 2;
    let top = (resized_height as usize - height) / 2;
    let mut data = vec![0.0f32; 3 * height * width];
    for y in 0..height {
        for x in 0..width {
            let pixel = resized.get_pixel((left + x) as u32, (top + y) as u32);
            for channel in 0..3 {
                let value = f32::from(pixel[channel]) / 255.0;
                data[(channel * height + y) * width + x] = (value - MEAN[channel]) / STD[channel];
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_png(path: &Path, width: u32, height: u32, pixel: impl Fn(u32, u32) -> [u8; 3]) {
        let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb(pixel(x, y)));
        image.save(path).unwrap();
    }

    #[test]
    fn a_flat_image_is_normalised_with_imagenets_mean_and_deviation() {
        let image = image::RgbImage::from_pixel(40, 30, image::Rgb([255, 0, 128]));
        let data = prepare(&image, [8, 8]);
        assert_eq!(data.len(), 3 * 64);
        let expect = [
            (1.0 - 0.485) / 0.229,
            (0.0 - 0.456) / 0.224,
            (128.0 / 255.0 - 0.406) / 0.225,
        ];
        for (channel, want) in expect.iter().enumerate() {
            for value in &data[channel * 64..(channel + 1) * 64] {
                assert!((value - want).abs() < 1e-5, "{channel}: {value} vs {want}");
            }
        }
    }

    #[test]
    fn the_centre_is_kept_and_the_sides_are_cropped() {
        // A wide image: red left third, green middle, blue right third. After the
        // shorter side is resized and the centre cropped, the middle column is green.
        let image = image::RgbImage::from_fn(96, 32, |x, _| match x / 32 {
            0 => image::Rgb([255, 0, 0]),
            1 => image::Rgb([0, 255, 0]),
            _ => image::Rgb([0, 0, 255]),
        });
        let data = prepare(&image, [16, 16]);
        let at = |channel: usize, y: usize, x: usize| data[(channel * 16 + y) * 16 + x];
        let green = (1.0 - 0.456) / 0.224;
        assert!((at(1, 8, 8) - green).abs() < 1e-5, "{}", at(1, 8, 8));
        assert!(at(0, 8, 8) < 0.0 && at(2, 8, 8) < 0.0);
    }

    #[test]
    fn a_folder_is_read_in_name_order_and_other_files_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        write_png(&dir.path().join("b.png"), 20, 20, |_, _| [0, 0, 0]);
        write_png(&dir.path().join("a.PNG"), 30, 20, |_, _| [255, 255, 255]);
        std::fs::write(dir.path().join("notes.txt"), "not an image").unwrap();
        let folder = ImageFolder::load(dir.path(), [3, 8, 8]).unwrap();
        assert_eq!(folder.names, ["a.PNG", "b.png"]);
        // Three images from two: the batch wraps around to the first.
        let batch = folder.batch(1, 2);
        assert_eq!(batch.shape, [2, 3, 8, 8]);
        let black = (0.0 - 0.485) / 0.229;
        let white = (1.0 - 0.485) / 0.229;
        assert!((batch.data[0] - black).abs() < 1e-5);
        assert!((batch.data[3 * 64] - white).abs() < 1e-5);
        assert_eq!(
            folder.describe(2),
            format!("2 images from {}", dir.path().display())
        );
    }

    #[test]
    fn empty_unreadable_and_grey_inputs_are_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = ImageFolder::load(dir.path(), [3, 8, 8]).unwrap_err();
        assert!(format!("{err:#}").contains("no images in"), "{err:#}");
        std::fs::write(dir.path().join("broken.jpg"), b"not a jpeg").unwrap();
        let err = ImageFolder::load(dir.path(), [3, 8, 8]).unwrap_err();
        assert!(format!("{err:#}").contains("broken.jpg"), "{err:#}");
        let err = ImageFolder::load(dir.path(), [1, 8, 8]).unwrap_err();
        assert!(format!("{err:#}").contains("1 input channels"), "{err:#}");
        let missing = dir.path().join("missing");
        let err = ImageFolder::load(&missing, [3, 8, 8]).unwrap_err();
        assert!(
            format!("{err:#}").contains("cannot read the image folder"),
            "{err:#}"
        );
    }
}
